package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// apiTimeout bounds every API request the agent makes.
const apiTimeout = 30 * time.Second

// agent runs the pods bound to one node.
type agent struct {
	cfg    config
	cgroup podCgroup // the pods' CPU cgroup (--pod-cgroup)
	client kubernetes.Interface
	api    apiServer // what pods are told about the API server
	log    logr.Logger
	ips    *ipPool
	// secrets and configMaps are watched, for the pods' env and volumes.
	secrets    corelisters.SecretLister
	configMaps corelisters.ConfigMapLister

	mu       sync.Mutex
	runners  map[types.UID]*podRunner
	stopping bool           // set at shutdown: no new runners
	wg       sync.WaitGroup // one per runner goroutine
}

// run registers the node, runs its pods until ctx ends, then stops every
// process it started.
func run(ctx context.Context, cfg config, log logr.Logger) error {
	a, err := newAgent(cfg, log)
	if err != nil {
		return err
	}
	node, err := registerNode(ctx, a.client, cfg.nodeName, cfg.nodeIP)
	if err != nil {
		return err
	}
	log.Info("Node registered", "node", cfg.nodeName, "address", cfg.nodeIP)
	a.watchSecrets(ctx)
	var alive sync.WaitGroup
	alive.Go(func() { a.keepNodeAlive(ctx, node) })
	err = a.watchPods(ctx)
	a.shutdown()
	alive.Wait()
	if err := a.cgroup.remove(); err != nil {
		log.Error(err, "Removing the pods' cgroup")
	}
	return err
}

// newAgent connects to the API server with cfg.kubeconfig.
func newAgent(cfg config, log logr.Logger) (*agent, error) {
	rest, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", cfg.kubeconfig, err)
	}
	rest.Timeout = apiTimeout
	// A kubelet's own limits (--kube-api-qps 50, --kube-api-burst 100):
	// client-go's default of 5/s is spent by the volume refreshes of a few
	// dozen pods, and a pod's status (a crash the operator must see) then
	// waits seconds in the client.
	rest.QPS, rest.Burst = 50, 100
	client, err := kubernetes.NewForConfig(rest)
	if err != nil {
		return nil, err
	}
	api, err := newAPIServer(rest)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.workdir, 0o755); err != nil {
		return nil, err
	}
	cgroup, err := newPodCgroup(cfg.podCgroup)
	if err != nil {
		return nil, err
	}
	return &agent{
		cfg: cfg, cgroup: cgroup, client: client, api: api, log: log,
		ips: newIPPool(cfg.addressPrefix), runners: map[types.UID]*podRunner{},
	}, nil
}

// watchSecrets starts the watch of Secrets and ConfigMaps the pods read.
// Until it has synced, reads go to the API server (secretGetter).
func (a *agent) watchSecrets(ctx context.Context) {
	factory := informers.NewSharedInformerFactory(a.client, 0)
	a.secrets = factory.Core().V1().Secrets().Lister()
	a.configMaps = factory.Core().V1().ConfigMaps().Lister()
	factory.Start(ctx.Done())
}

// getter reads namespace's Secrets and ConfigMaps.
func (a *agent) getter(namespace string) secretGetter {
	return secretGetter{client: a.client, secrets: a.secrets, configMaps: a.configMaps, namespace: namespace}
}

// watchPods feeds the pods bound to the node to the agent until ctx ends.
func (a *agent) watchPods(ctx context.Context) error {
	factory := informers.NewSharedInformerFactoryWithOptions(a.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", a.cfg.nodeName).String()
		}))
	informer := factory.Core().V1().Pods().Informer()
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { a.sync(ctx, obj) },
		UpdateFunc: func(_, obj any) { a.sync(ctx, obj) },
		DeleteFunc: func(obj any) { a.gone(obj) },
	})
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
	return nil
}

// sync reacts to a pod's latest state.
func (a *agent) sync(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if r := a.runners[pod.UID]; r != nil {
		if pod.DeletionTimestamp != nil {
			r.markDeleting(pod)
		}
		return
	}
	if a.stopping {
		return
	}
	switch {
	case pod.DeletionTimestamp != nil:
		a.wg.Go(func() { a.confirmDeletion(ctx, pod) })
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
	case pod.Status.Phase == corev1.PodRunning || len(pod.Status.ContainerStatuses) > 0:
		a.wg.Go(func() { a.reportLost(ctx, pod) })
	default:
		r := newPodRunner(a, pod)
		a.runners[pod.UID] = r
		a.wg.Go(func() { r.run(ctx) })
	}
}

// gone reacts to a pod removed from the API: its process is stopped.
func (a *agent) gone(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if r := a.runners[pod.UID]; r != nil {
		r.markDeleting(pod)
	}
}

// forget drops a finished runner.
func (a *agent) forget(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.runners, uid)
}

// shutdown waits for every runner to stop its process; ctx has ended, so
// each is already doing so.
func (a *agent) shutdown() {
	a.mu.Lock()
	a.stopping = true
	a.mu.Unlock()
	a.wg.Wait()
}

// podDir is the pod's local directory.
func (a *agent) podDir(pod *corev1.Pod) string {
	return filepath.Join(a.cfg.workdir, pod.Namespace, pod.Name)
}

// confirmDeletion finishes a pod's deletion as a kubelet does once nothing
// runs: delete with grace period 0.
func (a *agent) confirmDeletion(ctx context.Context, pod *corev1.Pod) {
	err := a.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
		a.log.Error(err, "Confirming pod deletion failed", "pod", pod.Namespace+"/"+pod.Name)
	}
}

// reportLost fails a pod that was running before the agent restarted: its
// process is gone and pods on this node are never restarted.
func (a *agent) reportLost(ctx context.Context, pod *corev1.Pod) {
	s := runState{failed: true, waitReason: "ProcessLost", message: "localnode restarted and lost this pod's process"}
	if err := a.updateStatus(ctx, pod, s); err != nil && ctx.Err() == nil {
		a.log.Error(err, "Reporting a lost pod failed", "pod", pod.Namespace+"/"+pod.Name)
	}
}
