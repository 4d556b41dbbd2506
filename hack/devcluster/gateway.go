package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// make dev proves the Gateway exposure with hack/devgateway: a Gateway
// API implementation for this cluster only, serving TLS on addr.gateway
// with a CA it writes to .dev/gateway. The GatewayClass and Gateway below
// are what a platform team would create for a real implementation; the
// room "public" reaches its maps through them.
const (
	devGatewayClass = "roomkeeper-dev"
	devGatewayName  = "dev"
	devGatewayHost  = "localhost"
	publicRoom      = "public"
)

// gatewayCertDir is where the dev gateway keeps its CA and certificate.
func gatewayCertDir(p paths) string { return filepath.Join(p.dir, "gateway") }

// startGateway runs bin/devgateway on addr.
func startGateway(procs *supervisor, p paths, addr addresses) error {
	step("Starting the development gateway (bin/devgateway, wss:// on " + addr.gateway + ")")
	return procs.start("devgateway", filepath.Join(p.root, "bin", "devgateway"), "--kubeconfig="+p.kubeconfig,
		"--listen="+addr.gateway, "--gateway-class="+devGatewayClass, "--cert-dir="+gatewayCertDir(p),
		"--hostnames="+devGatewayHost)
}

// createGateway creates the GatewayClass, the Gateway and the room
// "public" whose maps are reached through it, beside the sample room.
func createGateway(ctx context.Context, cfg *rest.Config, addr addresses) error {
	scheme := newScheme()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	_, portText, err := net.SplitHostPort(addr.gateway)
	if err != nil {
		return fmt.Errorf("--gateway %q: %w", addr.gateway, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return fmt.Errorf("--gateway %q: %w", addr.gateway, err)
	}
	for _, obj := range []client.Object{gatewayClass(), devGateway(port), publicGameRoom(port)} {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

func gatewayClass() *gatewayv1.GatewayClass {
	return &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: devGatewayClass},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: "roomkeeper.dev/devgateway"}}
}

func devGateway(port int) *gatewayv1.Gateway {
	return &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: devGatewayName},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: devGatewayClass, Listeners: []gatewayv1.Listener{{
			Name: "https", Protocol: gatewayv1.HTTPSProtocolType, Port: gatewayv1.PortNumber(port),
			Hostname: ptr.To(gatewayv1.Hostname(devGatewayHost)),
			TLS: &gatewayv1.ListenerTLSConfig{Mode: ptr.To(gatewayv1.TLSModeTerminate),
				CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "devgateway-tls"}}},
			AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptr.To(gatewayv1.NamespacesFromAll)}},
		}}},
	}
}

// publicGameRoom is a room of two maps joined by portals, on the sample's
// database, behind the dev Gateway: a whole session, transfers included,
// runs over wss://.
func publicGameRoom(port int) *gamev1.GameRoom {
	return &gamev1.GameRoom{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: publicRoom},
		Spec: gamev1.GameRoomSpec{
			Image: "roomkeeper/roomserver:dev", DefaultMap: "plaza",
			Maps: []gamev1.GameMap{
				{Name: "plaza", Config: gamev1.MapConfig{Seed: 5, Width: 256, Height: 256,
					Portals: []gamev1.Portal{{To: "hall", X: 200, Y: 128}}}},
				{Name: "hall", Config: gamev1.MapConfig{Seed: 7, Width: 128, Height: 128, Biome: "dungeon",
					Portals: []gamev1.Portal{{To: "plaza", X: 64, Y: 24}}}},
			},
			RoomSettings: gamev1.RoomSettings{
				Database: &gamev1.DatabaseRef{SecretRef: gamev1.SecretKeyRef{Name: "roomkeeper-db", Key: "dsn"}},
				Exposure: gamev1.Exposure{Type: gamev1.ExposureGateway,
					Gateway: &gamev1.GatewayExposure{Name: devGatewayName, Hostname: devGatewayHost, Port: int32(port)}},
			},
		},
	}
}

// newScheme knows the core, Roomkeeper and Gateway API types.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(gamev1.AddToScheme(s))
	utilruntime.Must(gatewayv1.Install(s))
	return s
}
