package store

import "testing"

// TestEveryHotStatementPrepares: one statement that does not prepare
// (a typo, a column renamed) would leave all of them unprepared, quietly,
// since a failed prepare only means running them as they are.
func TestEveryHotStatementPrepares(t *testing.T) {
	s := newStore(t)
	for _, q := range hotQueries {
		stmt, err := s.DB().PrepareContext(testCtx(t), q)
		if err != nil {
			t.Errorf("%v preparing\n%s", err, q)
			continue
		}
		_ = stmt.Close()
	}
	if err := s.prepare(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := len(s.prepared.loaded()); got != len(hotQueries) {
		t.Fatalf("%d statements prepared, want %d", got, len(hotQueries))
	}
}
