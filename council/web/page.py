"""The live page: one HTML document and its assets, package data under static/.

No CDN: the page works offline. ``/?thread=ID`` opens a thread.
"""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter, FastAPI
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

PACKAGE = "council.web"
router = APIRouter(include_in_schema=False)


@router.get("/")
def index() -> HTMLResponse:
    html = resources.files(PACKAGE).joinpath("static/index.html").read_text(encoding="utf-8")
    return HTMLResponse(html, headers={"Cache-Control": "no-cache"})


def mount_static(app: FastAPI) -> None:
    app.mount("/static", StaticFiles(packages=[(PACKAGE, "static")]), name="static")
