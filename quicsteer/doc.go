// Package quicsteer steers QUIC datagrams to the process that owns their
// connection, among the sockets of a Linux SO_REUSEPORT group.
//
// Several processes (a server's workers) each read their own UDP socket,
// all bound to one port with SO_REUSEPORT. Left alone the kernel picks a
// socket for each datagram by a hash of its addresses and ports, so a
// client that changes address (connection migration, a NAT rebinding)
// reaches a process that does not know its connection. Steering fixes
// that by connection ID, which a client keeps sending whatever its
// address:
//
//   - each process makes its connection IDs with a [Generator]: a
//     4-byte tag of its own, then 8 random bytes;
//   - a [Table] says which socket of the group (its index: the order the
//     sockets joined the group) holds each live tag, and which sockets
//     take new connections;
//   - [Table.Program] compiles the table to a classic BPF program, which
//     [Attach] attaches to the group (SO_ATTACH_REUSEPORT_CBPF); the
//     kernel runs it on each datagram's UDP payload and delivers the
//     datagram to the socket whose index it returns.
//
// The program reads the destination connection ID (a short header's at
// offset 1, a long header's at offset 6) and returns the index of the
// socket that holds its tag; a connection ID with no live tag (a
// client's first Initial packets, whose connection ID the client chose,
// or a connection of a process that has gone) goes to one of the
// sockets that take new connections, chosen by a hash of the connection
// ID's first 8 bytes, so that every datagram with that connection ID
// goes to the same one. A datagram too short to hold a connection ID
// returns [Fallback], which leaves the choice to the kernel's hash.
// [Table.Select] is the same function in Go: the tests hold the program
// to it.
//
// What an observer learns: the tag is the same in every connection ID a
// process issues, so connection IDs (and with them a connection before
// and after a migration) can be linked to one process of the server;
// the 8 random bytes keep them unlinkable among that process's
// connections.
package quicsteer
