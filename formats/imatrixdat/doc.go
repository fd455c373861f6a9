// Package imatrixdat reads and writes llama.cpp's legacy importance-matrix
// file (imatrix.dat), the format llama-imatrix wrote before its GGUF one
// and the only one llama-quantize read until then (llama.cpp c392e509).
//
// All integers are little-endian int32, values little-endian float32:
//
//	0              4
//	| n_entries    |                                   n_entries ≥ 1
//	then n_entries times:
//	| len | name[len] | ncall | nval | values[nval] f32 |
//	then, optionally (files written since mid-2024):
//	| chunks | len | dataset[len] |
//
// values[i] is the mean of the squared input activations of column i
// (expert-major for a stacked mixture weight) multiplied by ncall; a
// reader divides by ncall to get the mean back. llama-imatrix sets ncall to
// the number of evaluations (c392e509) or ⌈tokens/chunk size⌉ (current
// llama.cpp), chunks to the chunks evaluated and dataset to the text file's
// name as given on its command line.
//
// Entries are kept in file order. Every count and length is checked
// against the bytes left before anything is allocated.
package imatrixdat
