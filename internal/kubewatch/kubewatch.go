// Package kubewatch decides how this process's informers fill their caches
// from the API server.
package kubewatch

import (
	"os"

	clientfeatures "k8s.io/client-go/features"
)

// overrideVariable is client-go's own switch of the watch-list stream; an
// operator who sets it keeps the last word.
const overrideVariable = "KUBE_FEATURE_" + string(clientfeatures.WatchListClient)

// ListThenWatch makes every informer this process starts fill its cache
// with a list of whatever the API server's watch cache holds
// (resourceVersion=0) and then watch from there, instead of client-go's
// default watch-list stream. The stream asks for the most recent state: on
// an API server too busy for its watch cache to catch up within its
// 3-second wait the stream is refused and asked again, until the watch's
// 5-10 minute timeout makes the reflector fall back to a list (kubernetes
// issue 139766). A manager restarted on the soak's saturated control plane
// served nothing for 8 minutes that way and 5 seconds with a list
// (docs/benchmarks.md, "Eighth session"). Call it first in main, before any
// client is built.
func ListThenWatch() {
	if g, replace := withoutWatchListUnlessSet(clientfeatures.FeatureGates()); replace {
		clientfeatures.ReplaceFeatureGates(g)
	}
}

// withoutWatchListUnlessSet is gates with the watch-list stream off, unless
// the operator's switch is set.
func withoutWatchListUnlessSet(gates clientfeatures.Gates) (clientfeatures.Gates, bool) {
	if _, set := os.LookupEnv(overrideVariable); set {
		return gates, false
	}
	return withoutWatchList{gates}, true
}

// withoutWatchList answers as the gates it wraps, except that the watch-list
// stream is off.
type withoutWatchList struct{ clientfeatures.Gates }

func (g withoutWatchList) Enabled(f clientfeatures.Feature) bool {
	return f != clientfeatures.WatchListClient && g.Gates.Enabled(f)
}
