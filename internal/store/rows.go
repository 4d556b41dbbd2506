package store

import (
	"context"
	"database/sql"
)

// querier is a database or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryAll runs query and reads every row of its result with scan, in
// order; nil and the error if either fails.
func queryAll[T any](ctx context.Context, db querier, scan func(rowScanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// scanString reads a one-column string row.
func scanString(row rowScanner) (s string, err error) {
	err = row.Scan(&s)
	return s, err
}
