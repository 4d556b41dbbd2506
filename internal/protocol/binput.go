package protocol

import (
	"encoding/binary"
	"math"
)

// Binary input frame (docs/protocol.md, "Binary input"): movement inputs
// in 14 bytes instead of about 150 of JSON. A client that said hello with
// the binary codec may send them as binary frames:
//
//	magic version uvarint(ackTick) uvarint(first seq) count
//	count x [int16le x, int16le y, buttons]
//
// The inputs' seqs are first seq, first seq + 1, ...
const (
	// InputMagic is the first byte of every binary input frame ('I').
	InputMagic byte = 0x49
	// InputVersion is the second byte; it changes with any layout change.
	InputVersion byte = 1
	// MaxBinaryInputs bounds the inputs of one frame.
	MaxBinaryInputs = 64
	// DirectionScale is the quantization of a direction component: an
	// int16 of round(v * DirectionScale).
	DirectionScale   = 32767
	inputRecordBytes = 5
)

// QuantizeDirection is a direction component as a binary input frame
// carries it. A client that sends binary inputs predicts with these
// values, the ones the server applies, so its reconciliation stays exact.
func QuantizeDirection(v float32) float32 {
	return float32(quantizeDirection(v)) / DirectionScale
}

func quantizeDirection(v float32) int16 {
	if math.IsNaN(float64(v)) {
		return 0
	}
	return int16(math.Round(float64(max(-1, min(1, v))) * DirectionScale))
}

// AppendBinaryInput appends the frame of inputs (1 to MaxBinaryInputs,
// with consecutive seqs) acknowledging ackTick.
func AppendBinaryInput(buf []byte, ackTick uint64, inputs []Input) []byte {
	buf = append(buf, InputMagic, InputVersion)
	buf = binary.AppendUvarint(buf, ackTick)
	buf = binary.AppendUvarint(buf, uint64(inputs[0].Seq))
	buf = append(buf, byte(len(inputs)))
	for _, in := range inputs {
		buf = binary.LittleEndian.AppendUint16(buf, uint16(quantizeDirection(in.X)))
		buf = binary.LittleEndian.AppendUint16(buf, uint16(quantizeDirection(in.Y)))
		buf = append(buf, 0) // buttons: none yet
	}
	return buf
}

// DecodeBinaryInput reads a binary input frame, appending its inputs to
// out. A malformed frame (bad magic or version, a count of 0 or over
// MaxBinaryInputs, seqs past the uint32 range, buttons set, truncation or
// trailing bytes) is a *ProtocolError with CodeBadRequest and out
// unchanged. Directions are not checked here: see ValidateInput.
func DecodeBinaryInput(data []byte, out []Input) (ackTick uint64, inputs []Input, err error) {
	r := reader{buf: data, what: "binary input"}
	if magic := r.byte1("magic"); r.err == nil && magic != InputMagic {
		r.fail("magic 0x%02x, want 0x%02x", magic, InputMagic)
	}
	if v := r.byte1("version"); r.err == nil && v != InputVersion {
		r.fail("version %d, want %d", v, InputVersion)
	}
	ackTick = r.uvarint("ackTick")
	first := r.uvarint("seq")
	n := int(r.byte1("count"))
	switch {
	case r.err != nil:
	case n == 0 || n > MaxBinaryInputs:
		r.fail("count %d, want 1 to %d", n, MaxBinaryInputs)
	case first+uint64(n)-1 > math.MaxUint32:
		r.fail("seqs %d to %d pass the uint32 range", first, first+uint64(n)-1)
	case len(r.buf) != n*inputRecordBytes:
		r.fail("%d bytes for %d inputs, want %d", len(r.buf), n, n*inputRecordBytes)
	}
	if r.err != nil {
		return 0, out, r.err
	}
	start := len(out)
	for i := range n {
		x, y := int16(r.uint16le("x")), int16(r.uint16le("y"))
		if buttons := r.byte1("buttons"); buttons != 0 {
			r.fail("input %d: buttons 0x%02x: none are defined yet", i, buttons)
			return 0, out[:start], r.err
		}
		out = append(out, Input{Seq: uint32(first) + uint32(i), X: float32(x) / DirectionScale, Y: float32(y) / DirectionScale})
	}
	return ackTick, out, nil
}
