package aoi

import (
	"math"
	"math/bits"
	"slices"
)

// maxRuns is the most buckets a neighbourhood has: its 3x3 cells.
const maxRuns = 9

// windowWords is the size of the bitmap mergeBits sorts through: 128 words
// mark 8,192 consecutive entity indexes in 1 KiB of stack, so a map of that
// many entities is merged in a single pass.
const windowWords = 128

// maxWordsPerEntry is where the bitmap stops paying. Its cost follows the
// index span (one word scanned per 64 indexes), the comparison merge's
// follows the entries emitted; measured, they break even at about seven
// words per entry, which only happens with a few entities spread over a
// very large index range (a sparse corner of a world of 100,000+ entities).
const maxWordsPerEntry = 8

// runs holds the non-empty, individually ascending buckets of one
// neighbourhood. It lives on the caller's stack, so concurrent readers share
// nothing but the Grid they read.
type runs struct {
	s [maxRuns][]int32
	n int
}

// add records s if it is not empty and returns its length.
func (rs *runs) add(s []int32) int {
	if len(s) > 0 {
		rs.s[rs.n] = s
		rs.n++
	}
	return len(s)
}

// merge appends the total entries of all runs to dst in ascending order.
//
// Entity indexes follow entity ids, not positions, so the runs interleave
// at random and a comparison merge mispredicts a branch on most entries.
// Marking the indexes in a bitmap and reading it back in order has almost
// no data-dependent branches; measured on 2,200 entities in 8x8 cells
// (about 300 per neighbourhood) it is about 4x faster than slices.Sort and
// 5x faster than the comparison merge. The comparison merge is kept for
// sparse neighbourhoods, where the bitmap would be mostly empty words.
func (rs *runs) merge(dst []int32, total int) []int32 {
	dst = slices.Grow(dst, total)
	out := dst[len(dst) : len(dst)+total]
	if rs.span() <= int64(total)*maxWordsPerEntry*64 {
		rs.mergeBits(out)
	} else {
		rs.mergeHeads(out)
	}
	return dst[:len(dst)+total]
}

// span returns how many indexes lie between the smallest and the largest
// entry of all runs, inclusive; zero when there are no runs.
func (rs *runs) span() int64 {
	if rs.n == 0 {
		return 0
	}
	lo, hi := int32(math.MaxInt32), int32(0)
	for _, r := range rs.s[:rs.n] {
		lo, hi = min(lo, r[0]), max(hi, r[len(r)-1])
	}
	return int64(hi) - int64(lo) + 1
}

// mergeBits fills out by sorting through a bitmap, one window of indexes at
// a time starting at the smallest index not yet emitted, so gaps in the
// index range are skipped instead of scanned.
func (rs *runs) mergeBits(out []int32) {
	var set [windowWords]uint64
	for o := 0; o < len(out); {
		base := rs.minHead() &^ 63
		top := rs.mark(&set, base)
		o = drain(&set, top, base, out, o)
	}
}

// minHead returns the smallest entry not yet consumed from any run.
func (rs *runs) minHead() int32 {
	m := int32(math.MaxInt32)
	for _, r := range rs.s[:rs.n] {
		if len(r) > 0 {
			m = min(m, r[0])
		}
	}
	return m
}

// mark sets the bit of every run entry inside the window starting at base,
// consumes those entries, and returns one past the highest word it set.
// base is at most every run's head, so entry-base never goes negative.
func (rs *runs) mark(set *[windowWords]uint64, base int32) int {
	top := 0
	for j, r := range rs.s[:rs.n] {
		i := 0
		for ; i < len(r); i++ {
			d := uint32(r[i] - base)
			if d >= windowWords*64 {
				break
			}
			set[(d>>6)&(windowWords-1)] |= 1 << (d & 63)
		}
		if i > 0 {
			top = max(top, int(uint32(r[i-1]-base)>>6)+1)
		}
		rs.s[j] = r[i:]
	}
	return top
}

// drain writes the indexes marked in set[:top] to out from position o in
// ascending order, clears those words for the next window, and returns the
// new position.
func drain(set *[windowWords]uint64, top int, base int32, out []int32, o int) int {
	for w, word := range set[:top] {
		if word == 0 {
			continue
		}
		set[w] = 0
		wordBase := base + int32(w)*64
		for word != 0 {
			out[o] = wordBase + int32(bits.TrailingZeros64(word))
			o++
			word &= word - 1 // clear the lowest set bit
		}
	}
	return o
}

// mergeHeads fills out by repeatedly taking the smallest run head. With at
// most nine runs a linear scan beats a heap; the last run is copied whole.
func (rs *runs) mergeHeads(out []int32) {
	var head [maxRuns]int32
	k, s := rs.n, &rs.s
	for j := range k {
		head[j] = s[j][0]
	}
	o := 0
	for ; k > 1; o++ {
		m := minIndex(head[:k])
		out[o] = head[m]
		if r := s[m][1:]; len(r) > 0 {
			s[m], head[m] = r, r[0]
		} else {
			k--
			s[m], head[m] = s[k], head[k]
		}
	}
	if k == 1 {
		copy(out[o:], s[0])
	}
}

// minIndex returns the position of the smallest of the non-empty heads.
func minIndex(heads []int32) int {
	m := 0
	for j, h := range heads[1:] {
		if h < heads[m] {
			m = j + 1
		}
	}
	return m
}
