// Package joinapi is the join API the manager serves (docs/design.md section 3):
// players ask it for a map's endpoint and a signed join ticket, and manage
// their characters with their authKey as bearer credential; map pods ask
// it, on an internal route signed with their room's key, where a portal
// leads, and it creates an instanced map's MapInstance for a party that
// enters one (or claims a warm one). It reads GameRooms, MapInstances and key Secrets through the
// manager's cache, the rooms' database Secrets straight from the API
// server, and characters from each room's Postgres. docs/joinapi.md
// describes the HTTP interface.
package joinapi

// The join API runs in the manager, so the manager's ClusterRole needs what
// it reads and creates. Secrets: the labelled key Secrets come from the
// cache (list, watch), the rooms' database Secrets are read one by one
// (get). MapInstances: instanced maps' are created per party, or a warm
// one is claimed (updated: its labels) from the map's pool.

// +kubebuilder:rbac:groups=game.roomkeeper.dev,resources=gamerooms,verbs=get;list;watch
// +kubebuilder:rbac:groups=game.roomkeeper.dev,resources=mapinstances,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=core,resources=secrets,verbs=get;list;watch
