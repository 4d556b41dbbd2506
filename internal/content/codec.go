package content

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// A pack travels as JSON: a GameContent's spec is this form (with the
// object's name), the operator hands it to a map's pod as a file (the
// room server's --content-file), and the pod decodes and validates it
// again before it serves a tick.

// MarshalJSON writes the mask as the names of its slots, in slot order.
func (m SlotMask) MarshalJSON() ([]byte, error) {
	names := []string{}
	for _, s := range Slots() {
		if m.Has(s) {
			names = append(names, s.String())
		}
	}
	return json.Marshal(names)
}

// UnmarshalJSON reads a list of slot names.
func (m *SlotMask) UnmarshalJSON(data []byte) error {
	var names []string
	if err := json.Unmarshal(data, &names); err != nil {
		return err
	}
	*m = 0
	for _, name := range names {
		s, ok := ParseSlot(name)
		if !ok {
			return fmt.Errorf("slot %q is not one of %v", name, slotNames)
		}
		*m |= s.Mask()
	}
	return nil
}

// Parse reads a pack from its JSON form, unchecked; a field the form does
// not have is an error, not silently dropped.
func Parse(data []byte) (Pack, error) {
	var p Pack
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Pack{}, fmt.Errorf("content pack: %w", err)
	}
	return p, nil
}

// Decode reads a pack from its JSON form and validates it.
func Decode(data []byte) (Pack, error) {
	p, err := Parse(data)
	if err != nil {
		return Pack{}, err
	}
	if err := p.Validate(); err != nil {
		return Pack{}, fmt.Errorf("content pack %q: %w", p.Name, err)
	}
	return p, nil
}

// Encode is the pack's JSON form, the same bytes for the same pack.
func (p *Pack) Encode() ([]byte, error) {
	return json.Marshal(p)
}

// Revision names the pack's content: the first 16 hex digits of the
// SHA-256 of its JSON form. A changed pack has another revision, and the
// operator rolls the maps that use it.
func Revision(encoded []byte) string {
	sum := sha256.Sum256(encoded)
	return hex.EncodeToString(sum[:8])
}
