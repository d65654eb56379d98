package main

// The Redis client of ratelimit's redis option: package components does
// not link it, the sluice command does.
import _ "github.com/sluice-server/sluice/ratelimit/redisstore"
