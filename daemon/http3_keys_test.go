package daemon

import (
	"bytes"
	"testing"
)

// Processes given one secret derive the same keys; without one, each
// Server makes its own; the reset key and the token key differ.
func TestQUICKeys(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, 32)
	var a, b, c, d quicKeys
	ka, err := a.get(func() []byte { return secret })
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := b.get(func() []byte { return bytes.Clone(secret) })
	if ka.reset != kb.reset || ka.token != kb.token {
		t.Error("one secret, two keys")
	}
	if bytes.Equal(ka.reset[:], ka.token[:32]) {
		t.Error("the reset key is the token key")
	}
	kc, _ := c.get(noSecret)
	kd, _ := d.get(noSecret)
	if kc.reset == kd.reset || kc.reset == ka.reset {
		t.Error("random secrets gave one key")
	}
	again, _ := c.get(noSecret)
	if again.reset != kc.reset {
		t.Error("the keys changed between two calls")
	}
	var e quicKeys
	if _, err := e.get(func() []byte { return []byte("short") }); err == nil {
		t.Error("a 5-byte secret was taken")
	}
}

func noSecret() []byte { return nil }

// The listener's transport resets with the Server's key.
func TestHTTP3StatelessResetKey(t *testing.T) {
	site := newH3Site(t, "true")
	site.srv.lnMu.Lock()
	tr := site.srv.lns[0].h3.tr
	site.srv.lnMu.Unlock()
	if tr.StatelessResetKey == nil || *tr.StatelessResetKey != site.srv.quicKeys.reset {
		t.Error("the transport does not reset with the server's key")
	}
	if tr.TokenGeneratorKey == nil || *tr.TokenGeneratorKey != site.srv.quicKeys.token {
		t.Error("the transport's tokens are not made with the server's key")
	}
}
