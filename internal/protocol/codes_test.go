package protocol

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// TestCodesAreTheDocumentedOnes: the error table of docs/protocol.md lists
// exactly the codes the server can send, in the same order.
func TestCodesAreTheDocumentedOnes(t *testing.T) {
	doc, err := os.ReadFile("../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	section := regexp.MustCompile("(?s)\n## Error codes\n(.*?)\n## ").FindSubmatch(doc)
	if section == nil {
		t.Fatal("docs/protocol.md has no Error codes section")
	}
	var documented []Code
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllSubmatch(section[1], -1) {
		documented = append(documented, Code(m[1]))
	}
	if !slices.Equal(documented, Codes) {
		t.Errorf("docs/protocol.md documents the codes %v, the protocol has %v", documented, Codes)
	}
}
