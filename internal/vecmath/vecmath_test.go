package vecmath

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The quantized dot product is the float cosine within 0.01, whatever the
// dimension (including ones the unrolled loop leaves a tail of).
func TestDotIsCosine(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, dim := range []int{1, 3, 64, 767, 768} {
		for range 50 {
			a, b := make([]float32, dim), make([]float32, dim)
			for i := range a {
				a[i], b[i] = rng.Float32()-0.5, rng.Float32()-0.5
			}
			var ab, aa, bb float64
			for i := range a {
				ab += float64(a[i]) * float64(b[i])
				aa += float64(a[i]) * float64(a[i])
				bb += float64(b[i]) * float64(b[i])
			}
			want := ab / math.Sqrt(aa*bb)
			if got := Dot(Normalize(a), Quantize(Normalize(b))); math.Abs(got-want) > 0.01 {
				t.Fatalf("dim %d: %f, want %f", dim, got, want)
			}
		}
	}
	if z := Normalize(make([]float32, 4)); z[0] != 0 || len(Quantize(z)) != 4 {
		t.Fatal("a zero vector")
	}
}

// TopK keeps what sorting every offer and taking the first K keeps.
func TestTopK(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{0, 1, 5, 64} {
		for _, n := range []int{0, 3, 100, 1000} {
			top := TopK{K: k}
			var all []float64
			for i := range n {
				s := float64(rng.IntN(50)) // ties included
				all = append(all, s)
				top.Offer(Scored{ID: int64(i), Score: s})
			}
			slices.Sort(all)
			slices.Reverse(all)
			best := top.Best()
			if len(best) != min(k, n) {
				t.Fatalf("k %d n %d: kept %d", k, n, len(best))
			}
			for i, b := range best {
				if b.Score != all[i] {
					t.Fatalf("k %d n %d: %d-th best %v, want %v", k, n, i, b.Score, all[i])
				}
			}
		}
	}
}
