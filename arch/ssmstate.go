package arch

// SSMStateFloats is llama.cpp's n_embd_r + n_embd_s of a recurrent layer
// of family f for config c (Mamba's and Mamba-2's: (d_conv − 1) · (d_inner
// + 2 · n_group · d_state) for the convolution, d_state · d_inner for the
// scan), from the GGUF keys the family writes for c; 0 when it writes no
// ssm.* keys. A layer whose Pattern states no StateFloats keeps this
// (the Mamba families'): the memory estimate counts it, and the runtime's
// mixers are held to it when they load.
func (f *Family) SSMStateFloats(c Config) int64 {
	md, err := f.GGUFMetadata(c, 0)
	if err != nil {
		return 0
	}
	get := func(key string) int64 {
		v, ok := md.Get(f.Name + "." + key)
		if !ok {
			return 0
		}
		n, _ := v.Int()
		return max(n, 0)
	}
	conv, inner, state, groups := get("ssm.conv_kernel"), get("ssm.inner_size"), get("ssm.state_size"), get("ssm.group_count")
	const maxDim = 1 << 24
	for _, v := range []int64{conv, inner, state, groups} {
		if v > maxDim {
			return 0
		}
	}
	return max(conv-1, 0)*(inner+2*groups*state) + state*inner
}
