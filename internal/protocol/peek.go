package protocol

// PeekBinaryHeader decodes only a binary snapshot's header, so a client can
// find the base a delta needs before decoding it.
func PeekBinaryHeader(data []byte) (BinaryHeader, error) {
	r := reader{buf: data}
	h, _ := r.header()
	if r.err != nil {
		return BinaryHeader{}, r.err
	}
	return h, nil
}
