package components

import "github.com/sluice-server/sluice/pipe"

// pathParamsSupported reports whether the router gives components the
// path parameters of a match's named captures.
const pathParamsSupported = false

// pathParam returns the path parameter name of the request.
func pathParam(c *pipe.Conn, name string) string { return "" }
