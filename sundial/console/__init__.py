"""The Sundial console: plain HTML, CSS and ES modules in static/, served as they are (no build step).

The local stack serves it at /console beside the API; `sundial console` serves it on loopback and
forwards its API calls, signed, to a deployed stage (sundial/console/server.py).
"""
