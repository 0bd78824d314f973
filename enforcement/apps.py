from __future__ import annotations

from django.apps import AppConfig


class EnforcementConfig(AppConfig):
    name = "enforcement"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # posture sits below this app: it reads the generated pack (DRIFT-005) through the
        # generator registered here, never by importing enforcement.
        from enforcement.packs import policy_pack
        from posture.policy_packs import pack_generator_register

        pack_generator_register(
            lambda cluster, dialect, inputs: policy_pack(
                cluster, dialect=dialect, mode="enforce", inputs=inputs
            )
        )
