package engine

// SetHTTP2XNet makes servers started from now on serve HTTP/2 with x/net's
// server (true) or the engine's own (false), for benchmarks comparing the
// two; it returns the previous setting.
func SetHTTP2XNet(on bool) bool {
	old := http2XNet
	http2XNet = on
	return old
}
