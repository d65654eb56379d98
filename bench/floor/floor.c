/*
 * floor: the least an HTTP/1.1 keep-alive server can do on Linux, the
 * yardstick of the engine's pipelined figure. One thread, one epoll set,
 * edge-triggered; for every request it sees (it counts "\r\n\r\n" and
 * parses nothing else) it answers the same 151-byte page, all the
 * answers to one read in one send. Not a server: it ignores the method,
 * the target and partial sends.
 *
 *   cc -O2 -o floor floor.c && taskset -c 1 ./floor 18091
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define BODY "<!DOCTYPE html><html><head><title>floor</title></head><body><p>The least a server can do: count requests, and answer each the same!!</p></body></html>\n"
static char resp[512], out[512 * 64];
static int resplen;

int main(int argc, char **argv) {
	int port = argc > 1 ? atoi(argv[1]) : 18091, one = 1;
	resplen = snprintf(resp, sizeof resp, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %zu\r\n\r\n%s", strlen(BODY), BODY);
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 4096)) { perror("listen"); return 1; }
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = ls}, evs[256];
	epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
	static int state[65536]; /* bytes of "\r\n\r\n" matched at the end of the last read, per fd */
	char buf[65536];
	for (;;) {
		int n = epoll_wait(ep, evs, 256, -1);
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == ls) {
				int c;
				while ((c = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
					state[c] = 0;
					struct epoll_event ce = {.events = EPOLLIN | EPOLLET, .data.fd = c};
					epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
				}
				continue;
			}
			for (;;) {
				ssize_t r = recv(fd, buf, sizeof buf, 0);
				if (r <= 0) {
					if (r < 0 && errno == EAGAIN) break;
					close(fd);
					break;
				}
				int reqs = 0, s = state[fd];
				for (ssize_t j = 0; j < r; j++) {
					char want = (s & 1) ? '\n' : '\r';
					s = buf[j] == want ? s + 1 : (buf[j] == '\r' ? 1 : 0);
					if (s == 4) { reqs++; s = 0; }
				}
				state[fd] = s;
				while (reqs > 0) {
					int k = reqs > 64 ? 64 : reqs, m = 0;
					for (int j = 0; j < k; j++) { memcpy(out + m, resp, resplen); m += resplen; }
					send(fd, out, m, MSG_NOSIGNAL);
					reqs -= k;
				}
			}
		}
	}
}
