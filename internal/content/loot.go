package content

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Loot: an enemy's Drops are its own loot table, and a pack's LootTables
// are tables shared by name. A line of a table drops an item kind, or
// rolls another table (a nested roll): an enemy's drops may say "one in
// ten kills rolls the crypt's common spoils", and several enemies share
// that table. Tables may nest, but never in a cycle.

// Drop is one line of a loot table: an item kind, or the name of a loot
// table to roll in turn, and its chance in thousandths. The chances of a
// table add up to at most 1000; the rest is the chance of no drop.
type Drop struct {
	Kind string `json:"kind,omitempty"`
	// Table names one of the pack's LootTables, rolled when this line is
	// picked; a line has a Kind or a Table.
	Table    string `json:"table,omitempty"`
	PerMille int    `json:"perMille"`
}

// LootTable is a named loot table.
type LootTable struct {
	Name  string `json:"name"`
	Drops []Drop `json:"drops"`
}

// LootTable is the pack's loot table of that name, and whether it has
// one.
func (p *Pack) LootTable(name string) (LootTable, bool) {
	i := slices.IndexFunc(p.LootTables, func(t LootTable) bool { return t.Name == name })
	if i < 0 {
		return LootTable{}, false
	}
	return p.LootTables[i], true
}

// Pick rolls a loot table: roll(depth) is the roll, 0 to 999, of the
// table at that nesting depth (0 for drops itself), so that the caller
// keeps the rolls deterministic. It returns the item kind dropped, if
// any. A valid pack has no cycle; the depth is bounded all the same.
func (p *Pack) Pick(drops []Drop, roll func(depth int) int) (string, bool) {
	for depth := 0; depth <= len(p.LootTables); depth++ {
		d, ok := pickLine(drops, roll(depth))
		switch {
		case !ok:
			return "", false
		case d.Table == "":
			return d.Kind, true
		}
		t, _ := p.LootTable(d.Table)
		drops = t.Drops
	}
	return "", false
}

// pickLine is the line of drops a roll r of 0 to 999 picks, if any.
func pickLine(drops []Drop, r int) (Drop, bool) {
	for _, d := range drops {
		if r -= d.PerMille; r < 0 {
			return d, true
		}
	}
	return Drop{}, false
}

// validateDrops checks one loot table's lines on their own, naming the
// field; which tables they name is validateLootTables'.
func validateDrops(field string, drops []Drop) error {
	var errs []error
	total := 0
	for i, d := range drops {
		if (d.Kind == "") == (d.Table == "") {
			errs = append(errs, fmt.Errorf("%s[%d].kind: a drop names an item kind or a loot table (table), one of them", field, i))
		}
		if d.PerMille < 1 || d.PerMille > 1000 {
			errs = append(errs, fmt.Errorf("%s[%d].perMille: %d is not within 1 to 1000", field, i, d.PerMille))
		}
		total += d.PerMille
	}
	if total > 1000 {
		errs = append(errs, fmt.Errorf("%s: the chances add up to %d, more than 1000", field, total))
	}
	return errors.Join(errs...)
}

// validateLootTables checks the shared tables (each named once, none
// empty), that every line naming a table names one of them, and that no
// table rolls itself again, through any chain of tables.
func (p *Pack) validateLootTables() error {
	var errs []error
	seen := map[string]bool{}
	for i, t := range p.LootTables {
		field := fmt.Sprintf("lootTables[%d]", i)
		if t.Name == "" || seen[t.Name] {
			errs = append(errs, fmt.Errorf("%s.name: %q is empty or defined twice", field, t.Name))
		}
		seen[t.Name] = true
		if len(t.Drops) == 0 {
			errs = append(errs, fmt.Errorf("%s.drops: a loot table has at least one line", field))
		}
		errs = append(errs, validateDrops(field+".drops", t.Drops))
	}
	p.eachDrop(func(field string, d Drop) {
		if d.Table != "" && !seen[d.Table] {
			errs = append(errs, fmt.Errorf("%s.table: loot table %q is not in lootTables", field, d.Table))
		}
	})
	return errors.Join(append(errs, p.lootCycles()...)...)
}

// lootCycles finds the tables that roll themselves again, through any
// chain of tables: a depth-first walk that meets a table still on its
// stack names the line that closes the cycle, and the cycle.
func (p *Pack) lootCycles() []error {
	index := map[string]int{}
	for i, t := range p.LootTables {
		if _, twice := index[t.Name]; !twice {
			index[t.Name] = i
		}
	}
	const onStack, done = 1, 2
	state := make([]uint8, len(p.LootTables))
	var stack []int
	var errs []error
	var visit func(i int)
	visit = func(i int) {
		state[i] = onStack
		stack = append(stack, i)
		for k, d := range p.LootTables[i].Drops {
			j, ok := index[d.Table]
			switch {
			case !ok:
			case state[j] == onStack:
				var chain []string
				for _, t := range stack[slices.Index(stack, j):] {
					chain = append(chain, p.LootTables[t].Name)
				}
				errs = append(errs, fmt.Errorf("lootTables[%d].drops[%d].table: loot table %q rolls itself again: %s", i, k, d.Table,
					strings.Join(append(chain, d.Table), " → ")))
			case state[j] == 0:
				visit(j)
			}
		}
		stack = stack[:len(stack)-1]
		state[i] = done
	}
	for i := range p.LootTables {
		if state[i] == 0 {
			visit(i)
		}
	}
	return errs
}

// eachDrop calls f with every line of every loot table in the pack (the
// enemies', the boss's and the shared ones) and the field that holds it.
func (p *Pack) eachDrop(f func(field string, d Drop)) {
	for i, e := range append(slices.Clip(p.Enemies), p.Boss) {
		field := fmt.Sprintf("enemies[%d]", i)
		if i == len(p.Enemies) {
			field = "boss"
		}
		for j, d := range e.Drops {
			f(fmt.Sprintf("%s.drops[%d]", field, j), d)
		}
	}
	for i, t := range p.LootTables {
		for j, d := range t.Drops {
			f(fmt.Sprintf("lootTables[%d].drops[%d]", i, j), d)
		}
	}
}
