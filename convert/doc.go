// Package convert holds what the translators from other servers' config
// files share: the Sluice config they build (Config, with its sites,
// routes and pipelines), written out as YAML by Config.YAML, and the
// notes (Note) on what they could not translate.
//
// The translators are its subpackages: convert/nginx reads nginx's
// configuration language, convert/caddyfile Caddy's Caddyfile. Each
// parses its input into a syntax tree (with a fuzz test that it never
// panics), then walks the tree into a Config, adding a Note for every
// directive it leaves out. `sluice convert` runs them.
//
// # Sites
//
// A translator groups routes by the host names they answer (Site), as
// nginx's server blocks and Caddy's site blocks do. Config.YAML writes
// each site's routes into the one routing table the config has, each
// route naming its host; a site without names answers every host.
package convert
