// F16ROWS8 gathers the binary16 words at A, A+rb, A+2rb, A+3rb, B, B+rb,
// B+2rb, B+3rb (BX = rb, DX = 3rb) into the eight words of X, in that
// order: the block scales of eight Q4_0 rows for the chain kernels
// (qgemm_amd64.s, qgemm256_amd64.s), widened next by VCVTPH2PS.
#define F16ROWS8(A, B, X) \
	VPINSRW $0, (A), X, X \
	VPINSRW $1, (A)(BX*1), X, X \
	VPINSRW $2, (A)(BX*2), X, X \
	VPINSRW $3, (A)(DX*1), X, X \
	VPINSRW $4, (B), X, X \
	VPINSRW $5, (B)(BX*1), X, X \
	VPINSRW $6, (B)(BX*2), X, X \
	VPINSRW $7, (B)(DX*1), X, X
