package recovery

import "slices"

// Apply is s after the decisions: each recovered item lies, reachable, at
// its anchor, and is no longer pending. s is not changed, and applying the
// same decisions again changes nothing more.
func Apply(s State, decisions []Decision) State {
	out := s
	out.Items = slices.Clone(s.Items)
	out.Pending = slices.Clone(s.Pending)
	for _, d := range decisions {
		out.Items = slices.DeleteFunc(out.Items, func(it Item) bool { return it.ID == d.ItemID })
		out.Pending = slices.DeleteFunc(out.Pending, func(p Pending) bool { return p.ItemID == d.ItemID })
		out.Items = append(out.Items, Item{
			ID: d.ItemID, Kind: d.Kind, Reachable: true,
			Place: Place{Kind: Ground, Owner: d.Map, X: d.To.X, Y: d.To.Y},
		})
	}
	return out
}
