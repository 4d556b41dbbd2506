package testenv

import (
	"context"
	"io"
	"net/http"
	"testing"
)

// Get fetches url with client (nil: http.DefaultClient) under ctx and
// returns the status and the body; a request that gets no answer fails t.
func Get(t testing.TB, ctx context.Context, client *http.Client, url string) (int, string) {
	t.Helper()
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	return resp.StatusCode, string(body)
}
