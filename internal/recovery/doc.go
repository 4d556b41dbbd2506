// Package recovery decides when a critical item comes back: the pure step
// behind the critical-item contract (docs/design.md section 5).
//
// A pass looks at one map instance at one tick. The caller describes, in a
// State, every item of the critical kinds it knows of: lying on a map, held
// by a character (with whether that character is online, and for how long
// it has been away), or destroyed. It adds the anchors of each kind resolved
// to points on this map, the quest phases reached, and what the previous
// pass left pending. An item the map generated and nobody has moved since
// is lying at its spawn; "missing" means the caller knows of it nowhere.
// Decide returns the recoveries to make and the items to keep waiting for.
// It reads no database and no clock and starts no goroutine, and it sorts
// everything it returns: the same state and policies give identical
// decisions on every replica and after every restart.
//
// An item is bad when it is destroyed, missing, lying where the map's spawn
// cannot reach it (State says so per item: the caller knows the map), or
// held by a character offline for longer than the policy's OfflineTimeout
// (0 never takes an item back). Items online characters hold and items
// lying within reach are fine. A bad item is recovered once it has been bad
// for CooldownTicks and, with a QuestGate, once that phase is reached; until
// then it is pending. Result.Pending carries the tick each item was first
// seen bad, and the caller hands it back as State.Pending, so a cooldown
// spans passes. The cooldown runs while a quest gate is closed: an item lost
// long before the phase comes back as soon as the phase is reached. An item
// that turns fine again drops out of Pending, and its cooldown starts afresh
// the next time it turns bad.
//
// The three policy types:
//
//   - unique_persistent: one item with one id forever (the canonical id,
//     State.Canonical or CanonicalID). When it is bad it is moved, id and
//     all, to an anchor.
//   - regenerative_unique: one canonical item at a time. When it is bad it
//     respawns at an anchor, and the respawn keeps the canonical id rather
//     than minting a generation id. item_ownership has one row per item id,
//     so with one id "one at a time" holds in the database itself: a
//     rollback, a replayed decision or a lost character coming back online
//     cannot make a second key. The server also recognises the key by its
//     id, and the audit trail (tick and event id) tells the generations
//     apart. Decide therefore treats it as unique_persistent; the types
//     differ in what the content means (the same object returned, or a new
//     one), not in where the item goes.
//   - instance_quota: Quota items of the kind kept available. Every item of
//     the kind counts, whatever its id, except destroyed ones. Bad items are
//     taken back to anchors while fewer than Quota items are fine; when
//     fewer than Quota items exist at all, the shortfall is made from the
//     quota slots (State.Slots or SlotIDs) that hold no live item, first
//     slot first: a destroyed slot item is brought back under its id, an
//     unused slot is created. Decisions never make more than Quota items
//     exist, and never add any when Quota or more exist already.
//
// Items of kinds without a policy, and items of a unique kind under another
// id than the canonical one, are left alone (they still occupy anchors).
//
// A recovered item goes to the first anchor of its kind that no other item
// of the kind lies within one unit of (items recovered earlier in the same
// pass included), or to the first anchor when all are taken. Every decision
// carries an EventID made from the map, the item, the tick and the reason:
// committing a decision twice, after a crash say, is a no-op in the store,
// and Apply, which computes the state after the decisions, is idempotent
// too.
package recovery
