module sluicebench/fasthttp

go 1.26

require github.com/valyala/fasthttp v1.62.0

require (
	github.com/andybalholm/brotli v1.1.1 // indirect
	github.com/klauspost/compress v1.18.0 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
)
