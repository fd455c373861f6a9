//go:build !noasm

package kernels

import (
	"sync"
	"testing"

	"golang.org/x/sys/cpu"
)

// BenchmarkPeak measures the arithmetic ceiling of this CPU on Threads()
// threads: one instruction's throughput with twelve independent chains,
// reported as multiply-adds ×2 a second (GFLOP/s for the float32 FMAs,
// G int8 ops/s for VPDPBUSD and VPMADDUBSW, counting each 8-bit product and
// its addition). The reference mode multiplies float32 by float32 and can
// run no faster than fma512 (fma256 without AVX-512); --match-llamacpp and
// llama.cpp multiply 8-bit integers, 4× as many products an instruction.
//
//	go test -run '^$' -bench Peak ./kernels
func BenchmarkPeak(b *testing.B) {
	const iters = 1 << 22
	for _, c := range []struct {
		name string
		ok   bool
		f    func(int)
		ops  float64 // multiply-adds an iteration: 12 instructions × lanes
	}{
		{"fma512", cpu.X86.HasAVX512F, peakFMA512, 12 * 16},
		{"fma256", cpu.X86.HasFMA, peakFMA256, 12 * 8},
		{"vpdpbusd512", cpu.X86.HasAVX512VNNI, peakDPBUSD512, 12 * 64},
		{"vpmaddubsw256", cpu.X86.HasAVX2, peakMADDUBSW256, 12 * 32},
	} {
		b.Run(c.name, func(b *testing.B) {
			if !c.ok {
				b.Skip("not on this CPU")
			}
			n := Threads()
			for b.Loop() {
				var wg sync.WaitGroup
				for range n {
					wg.Add(1)
					go func() { defer wg.Done(); c.f(iters) }()
				}
				wg.Wait()
			}
			b.ReportMetric(2*c.ops*iters*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gop/s")
		})
	}
}
