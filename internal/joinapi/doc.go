// Package joinapi is the join API the manager serves (DESIGN.md section 3):
// players ask it for a map's endpoint and a signed join ticket, and manage
// their characters with their authKey as bearer credential. It reads
// GameRooms, MapInstances and key Secrets through the manager's cache, the
// rooms' database Secrets straight from the API server, and characters from
// each room's Postgres. docs/joinapi.md describes the HTTP interface.
package joinapi

// The join API runs in the manager, so the manager's ClusterRole needs what
// it reads. Secrets: the labelled key Secrets come from the cache (list,
// watch), the rooms' database Secrets are read one by one (get).

// +kubebuilder:rbac:groups=game.roomkeeper.dev,resources=gamerooms,verbs=get;list;watch
// +kubebuilder:rbac:groups=game.roomkeeper.dev,resources=mapinstances,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=secrets,verbs=get;list;watch
