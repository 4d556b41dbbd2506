package protocol_test

import (
	"encoding/hex"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/roomkeeper/roomkeeper/internal/protocol"
)

// TestTheDocumentedBinaryExampleIsWhatTheEncoderWrites: the example delta
// of docs/protocol.md, byte for byte, is what AppendBinarySnapshot writes
// for the change it describes, and it decodes to that change.
func TestTheDocumentedBinaryExampleIsWhatTheEncoderWrites(t *testing.T) {
	doc, err := os.ReadFile("../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)Example, a delta from tick 100 to 101.*? ([0-9]+) bytes;.*?\n```\n(.*?)```").FindSubmatch(doc)
	if block == nil {
		t.Fatal("docs/protocol.md has no binary example")
	}
	var documented []byte
	for line := range strings.Lines(string(block[2])) {
		bytes, _, _ := strings.Cut(line, "  ") // the comment follows two spaces
		b, err := hex.DecodeString(strings.ReplaceAll(bytes, " ", ""))
		if err != nil {
			t.Fatalf("example line %q: %v", line, err)
		}
		documented = append(documented, b...)
	}
	if size := string(block[1]); size != strconv.Itoa(len(documented)) {
		t.Errorf("docs/protocol.md calls the example %s bytes, it shows %d", size, len(documented))
	}
	base := []protocol.EntityState{ent(1, protocol.EntityPlayer, 10, 3, 100), ent(5, protocol.EntityNPC, 4, 4, 50), ent(9, protocol.EntityNPC, 6, 6, 20)}
	cur := []protocol.EntityState{ent(1, protocol.EntityPlayer, 10.5, 3, 100), ent(5, protocol.EntityNPC, 4, 4, 45), ent(12, protocol.EntityNPC, 2, 2, 30)}
	h := protocol.BinaryHeader{Tick: 101, BaseTick: 100, AckSeq: 7}
	if written := protocol.AppendBinarySnapshot(nil, h, wire(base), wire(cur)); !slices.Equal(written, documented) {
		t.Errorf("docs/protocol.md shows % x, the encoder writes % x", documented, written)
	}
	_, got, err := protocol.DecodeBinarySnapshot(documented, base, nil)
	if err != nil || !slices.Equal(got, cur) {
		t.Errorf("the example decodes to %+v (%v), want %+v", got, err, cur)
	}
}
