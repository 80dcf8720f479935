package vecmath

import (
	"math"
	"math/rand/v2"
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
