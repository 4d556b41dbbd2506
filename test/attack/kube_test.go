package attack

import (
	"context"
	"fmt"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
	"github.com/roomkeeper/roomkeeper/controllers"
	"github.com/roomkeeper/roomkeeper/internal/testenv"
)

// The cases that attack what the API server guards (config/policy) share
// one kube-apiserver and etcd, started by the first of them and stopped
// with the suite; it is installed as make deploy installs it: the CRDs and
// the room servers' status policy.
var kube struct {
	once   sync.Once
	cp     *testenv.ControlPlane
	admin  client.Client
	scheme *runtime.Scheme
	err    error
}

// controlPlane is the suite's control plane, started on first use.
func controlPlane(t testing.TB) client.Client {
	t.Helper()
	kube.once.Do(func() { kube.err = startControlPlane() })
	if kube.err != nil {
		t.Fatalf("attack suite control plane: %v", kube.err)
	}
	return kube.admin
}

func startControlPlane() error {
	kube.scheme = runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(kube.scheme); err != nil {
		return err
	}
	if err := gamev1.AddToScheme(kube.scheme); err != nil {
		return err
	}
	cp, err := testenv.Start()
	if err != nil {
		return err
	}
	kube.cp = cp
	if kube.admin, err = client.New(cp.Config, client.Options{Scheme: kube.scheme}); err != nil {
		return err
	}
	return testenv.ApplyRoomServerStatusPolicy(context.Background(), kube.admin)
}

// stopControlPlane ends the control plane if a case started one.
func stopControlPlane() {
	if kube.cp != nil {
		_ = kube.cp.Stop()
	}
}

// roomServerNamespace creates a namespace with what the operator gives
// every namespace holding rooms: the room servers' ServiceAccount, Role and
// RoleBinding (controllers.RoomServerRBAC).
func roomServerNamespace(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	admin := controlPlane(t)
	sa, role, binding := controllers.RoomServerRBAC(name)
	for _, obj := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, sa, role, binding} {
		if err := admin.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

// mapPod creates a pod as the operator's pod builder names and runs it (no
// kubelet here: it stays Pending, which is all a token needs).
func mapPod(t testing.TB, ctx context.Context, namespace, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{ServiceAccountName: controllers.RoomServerServiceAccount,
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "roomserver", Image: "roomkeeper/roomserver:attack"}}},
	}
	if err := controlPlane(t).Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// podCredentials is what a kubelet gives a map pod: a token of the room
// servers' ServiceAccount bound to the pod (bound to none when pod is nil,
// as a token from a Secret or a plain TokenRequest is).
func podCredentials(t testing.TB, ctx context.Context, namespace string, pod *corev1.Pod) *rest.Config {
	t.Helper()
	controlPlane(t)
	cs, err := kubernetes.NewForConfig(kube.cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if pod != nil {
		req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, controllers.RoomServerServiceAccount, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token for %v: %v", pod, err)
	}
	return &rest.Config{Host: kube.cp.Config.Host, BearerToken: tr.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: kube.cp.Config.CAData}}
}

// mapInstance creates a MapInstance whose status names pod as its pod, as
// the operator writes it, with an endpoint players are sent to.
func mapInstance(t testing.TB, ctx context.Context, namespace, mapName, pod string) *gamev1.MapInstance {
	t.Helper()
	admin := controlPlane(t)
	mi := &gamev1.MapInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: room + "-" + mapName},
		Spec:       gamev1.MapInstanceSpec{RoomName: room, MapName: mapName},
	}
	if err := admin.Create(ctx, mi); err != nil {
		t.Fatal(err)
	}
	mi.Status.PodName = pod
	mi.Status.Phase = gamev1.MapReady
	mi.Status.Endpoint = fmt.Sprintf("ws://10.0.0.%d:7350/ws", len(mapName))
	if err := admin.Status().Update(ctx, mi); err != nil {
		t.Fatal(err)
	}
	return mi
}
