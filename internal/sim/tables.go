package sim

// sideTable holds the state one kind of entity has beyond identity and
// position, one row per entity of that kind, packed: Entity.slot is the
// entity's row. A removal moves the last row into the hole, so rows never
// shift and a system walks its kind's state without gaps.
type sideTable[T any] struct {
	rows []T
	ids  []uint32 // the entity of each row
}

// add appends a row for entity id and returns its slot.
func (t *sideTable[T]) add(id uint32, row T) int32 {
	t.rows = append(t.rows, row)
	t.ids = append(t.ids, id)
	return int32(len(t.rows) - 1)
}

// remove deletes the row at slot. When another row moved into it, moved
// names that row's entity, whose slot is now slot.
func (t *sideTable[T]) remove(slot int32) (moved uint32, ok bool) {
	last := int32(len(t.rows) - 1)
	if slot != last {
		t.rows[slot], t.ids[slot] = t.rows[last], t.ids[last]
		moved, ok = t.ids[slot], true
	}
	var zero T
	t.rows[last] = zero // let go of what the row held (inventories, backlogs)
	t.rows, t.ids = t.rows[:last], t.ids[:last]
	return moved, ok
}

// len counts the rows.
func (t *sideTable[T]) len() int { return len(t.rows) }
