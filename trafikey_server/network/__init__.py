"""The network, above the commands: listeners (TCP, unix sockets, TLS) and
``connection``, which reads requests off a socket, hands them to dispatch
and writes the replies and pushes back in order."""
