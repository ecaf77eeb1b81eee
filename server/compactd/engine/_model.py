"""Base for the engine's result models: snake_case in Python, camelCase on the wire
(`model_dump(by_alias=True)`), the same field names as the CLI's `--json` output."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class EngineModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)
