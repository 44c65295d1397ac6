"""Flight Deck for agents and on-call tools: ``flightdeck mcp`` and ``flightdeck serve``.

``operations`` (path in, dict out; shared by both servers) on ``paths`` (the root and the
limits), ``memo`` (reports kept in memory), ``answers`` (a rank, a group) and ``analysis.live``
(``watch_status``: the snapshots and the line of ``flightdeck watch``);
``mcp_server`` and ``http_api`` serve them; ``main`` is their command line. The servers'
packages (mcp, fastapi, uvicorn) are the optional extra ``serve`` and are imported only
by ``mcp_server`` and ``http_api``.
"""
