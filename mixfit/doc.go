// Package mixfit chooses a quantization mixture for a size by measured
// sensitivity: how much each tensor, quantized alone to each type, moves
// the model's next-token distribution on a calibration text (mean KL
// divergence from the unquantized model), then the types that remove the
// most divergence per byte within the budget. It is what `tfconv quantize
// --target-bpw` runs.
package mixfit
