# Opens a TCP connection to the tritonlab server's own port on loopback.
import socket

s = socket.socket()
s.settimeout(3)
try:
    s.connect(("127.0.0.1", int("__PORT__")))
    print("LEAK: connected to the server")
except OSError as exc:
    print(f"refused: {exc}")
