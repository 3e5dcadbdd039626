"""CLIENT TRACKING / CACHING / GETREDIR / TRACKINGINFO (client-side caching,
served by ``tracking.py``) and CLIENT REPLY, which silences replies but not
the invalidation pushes.

Arguments are read in Valkey's order: every option first (so a bad REDIRECT
is refused before ON/OFF is looked at), then the checks of their
combination, each with Valkey's text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..protocol.args import Args
from ..protocol.resp import OK, array, bulk, integer
from ..services.tracking import refresh_hooks
from ..util.errors import CommandError, syntax

if TYPE_CHECKING:
    from ..services.client import Client

_SWITCH_BCAST = (b"ERR You can't switch BCAST mode on/off before disabling tracking for this client, "
                 b"and then re-enabling it with a different mode.")
_SWITCH_OPT = (b"ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, "
               b"and then re-enabling it with a different mode.")


def client_tracking(c: Client, argv: list[bytes]) -> bytes:
    """CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p ...] [OPTIN] [OPTOUT] [NOLOOP]"""
    a = Args(argv, 3)
    redirect = 0
    bcast = optin = optout = noloop = False
    prefixes: list[bytes] = []
    while a:
        opt = a.word()
        more = a.left() > 0
        if opt == b"redirect" and more:
            if redirect != 0:
                raise CommandError(b"ERR A client can only redirect to a single other client")
            redirect = a.int()
            # The client must exist now, though it may go away later.
            if redirect not in c.server.clients:
                raise CommandError(b"ERR The client ID you want redirect to does not exist")
        elif opt == b"bcast":
            bcast = True
        elif opt == b"optin":
            optin = True
        elif opt == b"optout":
            optout = True
        elif opt == b"noloop":
            noloop = True
        elif opt == b"prefix" and more:
            prefixes.append(a.next())
        else:
            raise syntax()
    tracking = c.server.tracking
    mode = Args(argv, 2).word()
    t = c.track
    on = t is not None and t.on
    if mode == b"on":
        if not bcast and prefixes:
            raise CommandError(b"ERR PREFIX option requires BCAST mode to be enabled")
        if on and t is not None and t.bcast != bcast:
            raise CommandError(_SWITCH_BCAST)
        if bcast and (optin or optout):
            raise CommandError(b"ERR OPTIN and OPTOUT are not compatible with BCAST")
        if optin and optout:
            raise CommandError(b"ERR You can't specify both OPTIN mode and OPTOUT mode")
        if on and t is not None and ((optin and t.optout) or (optout and t.optin)):
            raise CommandError(_SWITCH_OPT)
        if bcast:
            err = tracking.prefix_collision(c, prefixes)
            if err is not None:
                raise CommandError(err)
        tracking.enable(c, redirect, bcast, optin, optout, noloop, prefixes)
    elif mode == b"off":
        tracking.disable(c)
    else:
        raise syntax()
    return OK


def client_caching(c: Client, argv: list[bytes]) -> bytes:
    t = c.track
    if t is None or not t.on:
        raise CommandError(b"ERR CLIENT CACHING can be called only when the client is in tracking mode "
                           b"with OPTIN or OPTOUT mode enabled")
    opt = Args(argv, 2).word()
    if opt == b"yes":
        if not t.optin:
            raise CommandError(b"ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
    elif opt == b"no":
        if not t.optout:
            raise CommandError(b"ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
    else:
        raise syntax()
    t.caching = True
    return OK


def _redirect(c: Client) -> int:
    t = c.track
    return t.redirect if t is not None and t.on else -1


def client_getredir(c: Client, argv: list[bytes]) -> bytes:
    return integer(_redirect(c)) if _redirect(c) >= 0 else b":-1\r\n"


def client_trackinginfo(c: Client, argv: list[bytes]) -> bytes:
    t = c.track
    flags = [b"on" if t is not None and t.on else b"off"]
    prefixes: list[bytes] = []
    if t is not None and t.on:
        if t.bcast:
            flags.append(b"bcast")
        if t.optin:
            flags.append(b"optin")
            if t.caching:
                flags.append(b"caching-yes")
        if t.optout:
            flags.append(b"optout")
            if t.caching:
                flags.append(b"caching-no")
        if t.noloop:
            flags.append(b"noloop")
        if t.broken:
            flags.append(b"broken_redirect")
        prefixes = sorted(t.prefixes)
    redirect = _redirect(c)
    return c.r.map([
        (bulk(b"flags"), c.r.bulk_set(flags)),
        (bulk(b"redirect"), integer(redirect) if redirect >= 0 else b":-1\r\n"),
        (bulk(b"prefixes"), array([bulk(p) for p in prefixes])),
    ])


def client_reply(c: Client, argv: list[bytes]) -> bytes:
    """CLIENT REPLY ON|OFF|SKIP. OFF and SKIP answer nothing; SKIP silences
    the next request's reply. Pushes (invalidations) still go out."""
    opt = Args(argv, 2).word()
    if opt == b"on":
        c.reply_skip = c.reply_off = False
        refresh_hooks(c)
        return OK
    if opt == b"off":
        c.reply_off = True
    elif opt == b"skip":
        if not c.reply_off:
            c.reply_skip_next = True
    else:
        raise syntax()
    refresh_hooks(c)
    return b""
