package convert

// transpose returns the transform of a [rows, cols] matrix into [cols, rows].
func transpose(rows, cols int) func(dst, src []float32) {
	return func(dst, src []float32) {
		// Blocked so both sides stay in cache for large matrices.
		const blk = 64
		for r0 := 0; r0 < rows; r0 += blk {
			r1 := min(r0+blk, rows)
			for c0 := 0; c0 < cols; c0 += blk {
				c1 := min(c0+blk, cols)
				for r := r0; r < r1; r++ {
					for c := c0; c < c1; c++ {
						dst[c*rows+r] = src[r*cols+c]
					}
				}
			}
		}
	}
}
