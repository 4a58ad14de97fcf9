package minhash

// Jaccard returns |a ∩ b| / |a ∪ b| for two sorted, de-duplicated sets, by
// a merge (no maps, no allocation). Two empty sets are equal and give 1. The
// result is undefined if either input is not sorted and de-duplicated.
func Jaccard(a, b []uint64) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := Intersection(a, b)
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// Intersection returns |a ∩ b| for two sorted, de-duplicated sets.
func Intersection(a, b []uint64) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch x, y := a[i], b[j]; {
		case x < y:
			i++
		case x > y:
			j++
		default:
			n++
			i++
			j++
		}
	}
	return n
}

// minMaxCounts merges two sorted multisets (repeats allowed) and returns
// Σ min(count_a, count_b) and Σ max(count_a, count_b) over all elements.
func minMaxCounts(a, b []uint64) (sumMin, sumMax int) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var x uint64
		switch {
		case j >= len(b) || (i < len(a) && a[i] < b[j]):
			x = a[i]
		default:
			x = b[j]
		}
		ca, cb := 0, 0
		for i < len(a) && a[i] == x {
			ca++
			i++
		}
		for j < len(b) && b[j] == x {
			cb++
			j++
		}
		sumMin += min(ca, cb)
		sumMax += max(ca, cb)
	}
	return sumMin, sumMax
}

// WeightedJaccard returns Σ min / Σ max of the element counts of two sorted
// multisets (repeats allowed): the Jaccard similarity of bags, equal to the
// Jaccard of the bag-mode sets. Two empty bags give 1.
func WeightedJaccard(a, b []uint64) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	sMin, sMax := minMaxCounts(a, b)
	return float64(sMin) / float64(sMax)
}

// BagSimilarity returns Σ min / (|a| + |b|) of two sorted multisets, the bag
// similarity of Mining of Massive Datasets §3.1.2 ({a,a,a,b} and
// {a,a,b,b,c} give 1/3). Its maximum is 1/2, for equal bags. Two empty bags
// give 1/2.
func BagSimilarity(a, b []uint64) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 0.5
	}
	sMin, _ := minMaxCounts(a, b)
	return float64(sMin) / float64(len(a)+len(b))
}
