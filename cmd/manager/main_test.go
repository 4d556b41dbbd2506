package main

import "testing"

func TestCheckJoinAPIURL(t *testing.T) {
	for raw, ok := range map[string]bool{
		defaultJoinAPIURL:        true,
		"http://127.0.0.1:8090":  true,
		"https://join.example/":  true,
		"":                       true, // no --join-api for the pods
		"127.0.0.1:8090":         false,
		"ws://127.0.0.1:8090":    false,
		"http://":                false,
		"http://host:8090/?a=b":  false,
		"http://host:8090/#frag": false,
		"http://host:bad port":   false,
	} {
		if err := checkJoinAPIURL(raw); (err == nil) != ok {
			t.Errorf("checkJoinAPIURL(%q) = %v, want ok %v", raw, err, ok)
		}
	}
}
