"""The single definition of every request, response and record: the classes in `schemas.messages`, and the JSON
Schemas generated from them beside this file (`python -m schemas`)."""
