"""`python -m tritonlab.web serve ...`: the same command as `tritonlab serve`, without the rest of the CLI."""

import typer

from tritonlab.cli import serve as cli_serve

app = typer.Typer(add_completion=False, help="tritonlab's web server.")
cli_serve.register(app)


@app.callback()
def main() -> None:
    """tritonlab's web server."""


if __name__ == "__main__":
    app()
