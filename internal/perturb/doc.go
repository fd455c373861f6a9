// Package perturb writes a copy of a Hugging Face checkpoint with one weight
// row scaled, for the tests that check verify finds and locates a damaged
// model. It goes through the project's own safetensors writer, so the copy
// differs from the original in exactly that row.
package perturb
