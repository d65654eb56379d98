// Package config reads Sluice's config file — YAML, or JSON, which is
// YAML too — and builds the network of components it describes: each
// route's pipeline of components, in the order written, behind a
// pipe.Router, and with sites (Config.Sites) a router per site behind a
// pipe.Sites that chooses the site by host. A file may include others
// (Config.Files): their errors carry their own names and positions.
//
// # The file
//
//	listen: 127.0.0.1:8080
//	routes:
//	  - match: [/js/, /css/]      # trailing slash: prefix; otherwise exact
//	    pipeline:
//	      - files: ./public       # name: argument (the main option)
//	      - compress: [zstd, br, gzip]
//	  - match: /
//	    pipeline:
//	      - log
//	      - files: {root: ./public, browse: true}   # or a map of options
//
// docs/config.md describes every key and component. Components are looked
// up in the components registry (components.Lookup), which holds the
// built-in components and any a program added with components.Register;
// their options are
// decoded by the yaml tags of their options structs, and every key is
// checked against those tags before anything is decoded.
//
// # Errors
//
// Load and Parse report every problem they find, not just the first, as
// an Errors: each Error is FILE:LINE:COL: message. Unknown keys and
// component names come with a "did you mean", and errors from component
// constructors (a missing directory, a bad CIDR) carry the position of
// the pipeline entry.
//
// # Serving
//
// A Config only describes and builds: Config.Handler serves its routes on
// an engine.Server. Running it as a server — listeners, reloads that swap
// configs under load, log files, the pid file, signals — is package
// daemon's work (daemon.Server, daemon.Switch), which imports this one.
package config
