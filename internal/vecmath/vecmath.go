// Package vecmath is the arithmetic of stored embeddings: vectors are kept
// normalised and int8-quantized (a quarter of float32's bytes, a cosine
// within about 1%), so a cosine is one dot product of the normalised query
// with the stored bytes.
//
// Contract: Quantize(Normalize(v)) has len(v) bytes; Dot(Normalize(q), b)
// is the cosine of q and the vector b was made from, within 0.01. TopK
// keeps the K best of what it is offered, as sorting them all would.
package vecmath

import (
	"cmp"
	"math"
	"slices"
)

// Normalize returns v scaled to length 1 (zeros for a zero vector).
func Normalize(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if n == 0 {
		return out
	}
	inv := 1 / math.Sqrt(n)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}

// Quantize stores a normalised vector as int8 (each component times 127,
// rounded).
func Quantize(v []float32) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(int8(math.Round(float64(max(-1, min(1, x))) * 127)))
	}
	return b
}

// Dot is the dot product of a float vector and a quantized one, with four
// sums so the additions do not wait on each other. b must be at least as
// long as q.
func Dot(q []float32, b []byte) float64 {
	b = b[:len(q)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(q); i += 4 {
		s0 += q[i] * float32(int8(b[i]))
		s1 += q[i+1] * float32(int8(b[i+1]))
		s2 += q[i+2] * float32(int8(b[i+2]))
		s3 += q[i+3] * float32(int8(b[i+3]))
	}
	for ; i < len(q); i++ {
		s0 += q[i] * float32(int8(b[i]))
	}
	return float64(s0+s1+s2+s3) / 127
}

// Scored is an item's id and its score.
type Scored struct {
	ID    int64
	Score float64
}

// TopK keeps the K best scores offered (a min-heap of them: an offer that
// cannot enter costs one comparison).
type TopK struct {
	K    int
	heap []Scored
}

// Offer keeps s when it is among the K best so far.
func (t *TopK) Offer(s Scored) {
	h := t.heap
	switch {
	case len(h) < t.K:
		h = append(h, s)
		for i := len(h) - 1; i > 0; { // sift up
			p := (i - 1) / 2
			if h[p].Score <= h[i].Score {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
	case t.K > 0 && s.Score > h[0].Score:
		h[0] = s
		for i := 0; ; { // sift down
			l, m := 2*i+1, i
			if l < len(h) && h[l].Score < h[m].Score {
				m = l
			}
			if l+1 < len(h) && h[l+1].Score < h[m].Score {
				m = l + 1
			}
			if m == i {
				break
			}
			h[m], h[i] = h[i], h[m]
			i = m
		}
	}
	t.heap = h
}

// Floor is the score an offer must beat once K are kept (false before).
func (t *TopK) Floor() (float64, bool) {
	if len(t.heap) < t.K || t.K == 0 {
		return 0, false
	}
	return t.heap[0].Score, true
}

// Kept is what was kept, in no order (to merge several TopK).
func (t *TopK) Kept() []Scored { return t.heap }

// Best is what was kept, best first.
func (t *TopK) Best() []Scored {
	out := slices.Clone(t.heap)
	slices.SortStableFunc(out, func(a, b Scored) int { return cmp.Compare(b.Score, a.Score) })
	return out
}
