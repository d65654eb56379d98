//go:build amd64 && !race

#include "textflag.h"

// func copyNonTemporal(dst, src *byte, n int)
//
// Copies n bytes, a multiple of 64, from src to dst, with non-temporal
// stores (MOVNTDQ, SSE2: every amd64 has it), and fences them (SFENCE)
// before it returns. MOVNTDQ needs dst 16-byte aligned; storeCopy
// passes it aligned to a 64-byte line, so that each iteration writes
// one whole line. src may have any alignment (MOVOU).
TEXT ·copyNonTemporal(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $6, CX
	JZ   done

loop:
	MOVOU 0(SI), X0
	MOVOU 16(SI), X1
	MOVOU 32(SI), X2
	MOVOU 48(SI), X3
	MOVNTO X0, 0(DI)
	MOVNTO X1, 16(DI)
	MOVNTO X2, 32(DI)
	MOVNTO X3, 48(DI)
	ADDQ  $64, SI
	ADDQ  $64, DI
	DECQ  CX
	JNZ   loop
	SFENCE

done:
	RET
