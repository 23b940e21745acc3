"""Video agreement: KαLOS frame by frame and identity agreement track by track (docs/video.md)."""

from .engine import VideoConfig, VideoResult, video_steps

__all__ = ["VideoConfig", "VideoResult", "video_steps"]
