// Package supervisor runs a config with a master process and worker
// processes, as 'sluice serve' does with workers: N. The master (Master)
// opens the listening sockets once and starts workers of the same binary
// (RunWorker) that inherit them, checks their health over a private
// control channel, replaces those that fail, reloads by starting new
// workers and draining the old, and upgrades its binary by handing the
// sockets to a new master. It obtains the config's ACME certificates
// itself (certs.Issuer) for the workers to serve. HandleSignals
// drives a Master by nginx's signals. It runs on Linux. See
// docs/workers.md.
package supervisor
