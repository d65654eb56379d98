# Varnish in front of the cache scenario's origin: Varnish's built-in
# logic (GET and HEAD without Authorization or Cookie are looked up,
# responses kept as their Cache-Control says) and one backend, the
# origin; backend connections are kept alive by default. varnishd runs
# with malloc storage of 256 MB (as Sluice's store and nginx's max_size)
# and one thread pool, from the command line (Peer About).
vcl 4.1;

backend origin {
    .host = "{{.UpstreamHost}}";
    .port = "{{.UpstreamPort}}";
}
