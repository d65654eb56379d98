package htpasswd_test

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluice-server/sluice/htpasswd"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "htpasswd-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	hash, _ := bcrypt.GenerateFromPassword([]byte("opensesame"), 5) // htpasswd -B
	path := filepath.Join(dir, "users.htpasswd")
	os.WriteFile(path, []byte("ali:"+string(hash)+"\nbob:!\n"), 0o600)

	f, err := htpasswd.Open(path, htpasswd.Options{}) // bob's line is logged: bob is locked
	if err != nil {
		panic(err)
	}
	users, err := f.Users() // the file as it is now, read again if it changed
	if err != nil {
		fmt.Println("refuse everyone:", err)
		return
	}
	fmt.Println(users.Check([]byte("ali"), []byte("opensesame")))
	fmt.Println(users.Check([]byte("ali"), []byte("open sesame")))
	fmt.Println(users.Check([]byte("bob"), []byte("!")))
	// Output:
	// true
	// false
	// false
}
