package main

// The SQL drivers of the config's databases (package sqldata): the
// toolkit's packages import none, the sluice command links the three.
import (
	_ "github.com/go-sql-driver/mysql" // driver: mysql (MySQL, MariaDB)
	_ "github.com/jackc/pgx/v5/stdlib" // driver: postgres
	_ "modernc.org/sqlite"             // driver: sqlite (no cgo)
)
