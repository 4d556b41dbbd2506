// Package ext is the extension point of Traefik's dynamic configuration,
// empty in its open-source build (hack/node.sh: the module zip lacks it).
package ext

// HTTP extends Traefik's dynamic HTTP configuration; nothing here.
type HTTP struct{}

// Router extends a Traefik router; nothing here.
type Router struct{}

// RouterIng extends the routers of ingress annotations; nothing here.
type RouterIng struct{}

// ToRouter is the Router a RouterIng makes: none of its own.
func (RouterIng) ToRouter() Router { return Router{} }
