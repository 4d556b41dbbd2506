package main

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	restclient "k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	gamev1 "github.com/roomkeeper/roomkeeper/api/v1"
)

// watch starts an informer cache of the cluster's pods and MapInstances
// and returns it once it has synced, with the function that stops it.
func watch(ctx context.Context, rest *restclient.Config, scheme *runtime.Scheme) (ctrlclient.Reader, context.CancelFunc, error) {
	c, err := cache.New(rest, cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields(),
		ReaderFailOnMissingInformer: true}) // pods and MapInstances only: nothing else starts a watch
	if err != nil {
		return nil, nil, err
	}
	for _, kind := range []ctrlclient.Object{&corev1.Pod{}, &gamev1.MapInstance{}} {
		if _, err := c.GetInformer(ctx, kind); err != nil {
			return nil, nil, fmt.Errorf("watching %T: %w", kind, err)
		}
	}
	watchCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	go func() { _ = c.Start(watchCtx) }()
	if !c.WaitForCacheSync(ctx) {
		stop()
		return nil, nil, errors.New("the watches of pods and MapInstances never synced")
	}
	return c, stop, nil
}
