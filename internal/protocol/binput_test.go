package protocol

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestBinaryInputRoundTrips: what a client encodes the server decodes as
// the quantized directions, with consecutive seqs and the ackTick, in at
// most 24 bytes for one input.
func TestBinaryInputRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := 1 + rng.IntN(MaxBinaryInputs)
		first := rng.Uint32N(math.MaxUint32 - MaxBinaryInputs)
		ackTick := rng.Uint64N(1 << 40)
		in := make([]Input, n)
		for i := range in {
			a := rng.Float64() * 2 * math.Pi
			l := rng.Float64()
			in[i] = Input{Seq: first + uint32(i), X: float32(l * math.Cos(a)), Y: float32(l * math.Sin(a))}
		}
		frame := AppendBinaryInput(nil, ackTick, in)
		gotTick, got, err := DecodeBinaryInput(frame, nil)
		if err != nil || gotTick != ackTick || len(got) != n {
			t.Fatalf("decoded %d %d inputs %v, want %d and %d", gotTick, len(got), err, ackTick, n)
		}
		for i := range in {
			want := Input{Seq: in[i].Seq, X: QuantizeDirection(in[i].X), Y: QuantizeDirection(in[i].Y)}
			if got[i] != want {
				t.Fatalf("input %d decoded %+v, want %+v", i, got[i], want)
			}
			if err := ValidateInput(got[i]); err != nil {
				t.Fatalf("a valid direction quantized to an invalid one: %v", err)
			}
		}
	}
	one := AppendBinaryInput(nil, 123456, []Input{{Seq: 987654, X: 1}})
	if len(one) > 24 {
		t.Errorf("one input takes %d bytes, want at most 24", len(one))
	}
}

func TestBinaryInputRefusals(t *testing.T) {
	good := AppendBinaryInput(nil, 7, []Input{{Seq: 1, X: 1}, {Seq: 2, Y: -1}})
	for name, frame := range map[string][]byte{
		"empty":          {},
		"snapshot magic": append([]byte{BinaryMagic}, good[1:]...),
		"version 9":      append([]byte{InputMagic, 9}, good[2:]...),
		"count 0":        {InputMagic, InputVersion, 7, 1, 0},
		"count 65":       append([]byte{InputMagic, InputVersion, 7, 1, 65}, bytes.Repeat([]byte{0}, 65*inputRecordBytes)...),
		"truncated":      good[:len(good)-1],
		"trailing":       append(bytes.Clone(good), 0),
		"buttons":        append(bytes.Clone(good[:len(good)-1]), 1),
		"seq overflow":   AppendBinaryInput(nil, 7, []Input{{Seq: math.MaxUint32}, {Seq: 0}}),
		"bad varint":     {InputMagic, InputVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	} {
		out := []Input{{Seq: 99}}
		_, got, err := DecodeBinaryInput(frame, out)
		if pe, ok := errors.AsType[*ProtocolError](err); !ok || pe.Code != CodeBadRequest || !strings.HasPrefix(pe.Message, "binary input: ") {
			t.Errorf("%s: %v, want bad_request", name, err)
		}
		if len(got) != 1 {
			t.Errorf("%s: out grew to %d", name, len(got))
		}
	}
}

// FuzzDecodeBinaryInput: any bytes decode to an error or to at most
// MaxBinaryInputs valid-length inputs, which encode to a frame that
// decodes to the same (a frame with an overlong varint, or -32768, is not
// byte for byte what the encoder writes, but means the same).
func FuzzDecodeBinaryInput(f *testing.F) {
	f.Add(AppendBinaryInput(nil, 7, []Input{{Seq: 1, X: 1}, {Seq: 2, Y: -1}}))
	f.Add([]byte{InputMagic, InputVersion, 0, 0, 1, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		ackTick, in, err := DecodeBinaryInput(data, nil)
		if err != nil {
			return
		}
		if len(in) == 0 || len(in) > MaxBinaryInputs {
			t.Fatalf("%x decoded to %d inputs", data, len(in))
		}
		tick2, in2, err := DecodeBinaryInput(AppendBinaryInput(nil, ackTick, in), nil)
		if err != nil || tick2 != ackTick || len(in2) != len(in) {
			t.Fatalf("%x: re-encoded frame decodes to %d %+v %v", data, tick2, in2, err)
		}
		for i := range in {
			if math.Abs(float64(in2[i].X-in[i].X)) > 1e-4 || math.Abs(float64(in2[i].Y-in[i].Y)) > 1e-4 || in2[i].Seq != in[i].Seq {
				t.Fatalf("%x: input %d %+v re-decoded as %+v", data, i, in[i], in2[i])
			}
		}
	})
}

// BenchmarkDecodeBinaryInput: the server's cost of one binary input frame
// of one input, decoded into a reused slice.
func BenchmarkDecodeBinaryInput(b *testing.B) {
	frame := AppendBinaryInput(nil, 123456, []Input{{Seq: 987654, X: 0.6, Y: 0.8}})
	out := make([]Input, 0, MaxBinaryInputs)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := DecodeBinaryInput(frame, out[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(frame)), "bytes/frame")
}
